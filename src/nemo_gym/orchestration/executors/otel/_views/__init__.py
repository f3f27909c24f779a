"""Stage 7, views of results for people and scripts: text, JSON and Mermaid."""
