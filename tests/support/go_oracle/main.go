// The Go side of tests/test_go_regexp.py: for each JSON line ["regexp", text] it answers
// [compiles, regexp.Compile's error, SubexpNames], and for ["unquote", text] it answers
// [unquotes, strconv.Unquote's error, [value]], one JSON line each.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var ask [2]string
		if err := json.Unmarshal(in.Bytes(), &ask); err != nil {
			panic(err)
		}
		var err error
		var found []string
		if ask[0] == "regexp" {
			var re *regexp.Regexp
			if re, err = regexp.Compile(ask[1]); err == nil {
				found = re.SubexpNames()
			}
		} else {
			var value string
			if value, err = strconv.Unquote(ask[1]); err == nil {
				found = []string{value}
			}
		}
		message := ""
		if err != nil {
			message = err.Error()
		}
		if err := out.Encode([]any{err == nil, message, found}); err != nil {
			panic(err)
		}
	}
}
