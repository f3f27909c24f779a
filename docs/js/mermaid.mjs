// Draws the ```mermaid blocks of these pages (the pipeline graph) when the site is read online;
// offline, or without JavaScript, the block stays as its Mermaid source.
import mermaid from "https://cdn.jsdelivr.net/npm/mermaid@11/dist/mermaid.esm.min.mjs";

const blocks = document.querySelectorAll("pre > code.language-mermaid");
for (const code of blocks) {
  const drawing = document.createElement("div");
  drawing.className = "mermaid";
  drawing.textContent = code.textContent;
  code.parentElement.replaceWith(drawing);
}
mermaid.initialize({ startOnLoad: false });
await mermaid.run({ nodes: document.querySelectorAll("div.mermaid") });
