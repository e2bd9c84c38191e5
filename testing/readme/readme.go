// Package readme runs README.md's walkthrough as written and keeps its pasted outputs true.
//
// The walkthrough (the "## Walkthrough against `make run`" section and its subsections) is a sequence of
// commands, each a ```sh block, and their outputs: the ```text block right after a ```sh block is that
// block's output, as a run printed it (blank lines left out); a ```sh block without one prints nothing.
// HTML comments on the lines right before a ```sh block tell the runner how to treat it:
//
//	<!-- readme-test: unordered -->          the output's lines are compared as a multiset (kubectl sorts
//	                                         by names that differ from run to run)
//	<!-- readme-test: skip REASON -->        the block is not run (REASON says why)
//	<!-- readme-test: restart ENV=V ... -->  `keb dev` is restarted with these settings before the block;
//	                                         the text above must tell the reader the same: "`ENV=V ... make run`"
//
// TestREADME runs every block in order in one bash against a fresh `keb dev`, and compares each output
// with the pasted one through the masks in mask.go; `make readme` runs the same and rewrites the pasted
// outputs instead.
package readme

import (
	"fmt"
	"strings"
)

// walkthroughHeading opens the part of README.md that runs; the next "## " heading closes it.
const walkthroughHeading = "## Walkthrough against `make run`"

const directivePrefix = "<!-- readme-test:"

// Block is one ```sh block of the walkthrough and the output pasted after it.
type Block struct {
	// Section is the nearest heading above the block.
	Section string
	// Line is the 1-based line of the block's opening fence in README.md.
	Line int
	// Script is the block's text, run as it is.
	Script string
	// Output is the pasted output (nil when there is no ```text block).
	Output []string
	// Unordered, Skip and Restart come from the block's directive.
	Unordered bool
	Skip      string
	// Restart holds the settings (NAME=VALUE) `keb dev` restarts with before the block, when not nil.
	Restart []string

	// outStart and outEnd are the line indexes (0-based) of the output block's fences, -1 without one;
	// end is the index of the sh block's closing fence.
	end, outStart, outEnd int
}

// Name says where a block is, for failure messages.
func (b Block) Name() string { return fmt.Sprintf("README.md:%d (%s)", b.Line, b.Section) }

// Parse returns the walkthrough's ```sh blocks of readme, in order.
func Parse(readme string) ([]Block, error) {
	lines := strings.Split(readme, "\n")
	var blocks []Block
	in, section, sectionStart := false, "", 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == walkthroughHeading:
			in, section = true, strings.TrimPrefix(l, "## ")
			continue
		case in && strings.HasPrefix(l, "## "):
			return blocks, nil
		case !in:
			continue
		case strings.HasPrefix(l, "### "):
			section, sectionStart = strings.TrimPrefix(l, "### "), i
			continue
		case strings.HasPrefix(l, "```") && l != "```sh":
			// Any other fenced block (an output, a log excerpt, a file): skip to its end, so that a
			// fence inside cannot be taken for a ```sh block.
			end, err := fenceEnd(lines, i)
			if err != nil {
				return nil, err
			}
			i = end
			continue
		case l != "```sh":
			continue
		}
		b := Block{Section: section, Line: i + 1, outStart: -1, outEnd: -1}
		if err := b.directives(lines, i); err != nil {
			return nil, err
		}
		if b.Restart != nil {
			// The reader restarts `make run` by hand: the section must say how, in the same words.
			cmd := "`" + strings.Join(b.Restart, " ") + " make run`"
			if !strings.Contains(strings.Join(lines[sectionStart:i], "\n"), cmd) {
				return nil, fmt.Errorf("README.md:%d: the section restarts keb dev but its text does not say %s", i+1, cmd)
			}
		}
		end, err := fenceEnd(lines, i)
		if err != nil {
			return nil, err
		}
		b.Script, b.end = strings.Join(lines[i+1:end], "\n")+"\n", end
		if end+1 < len(lines) && lines[end+1] == "```text" {
			oe, err := fenceEnd(lines, end+1)
			if err != nil {
				return nil, err
			}
			b.outStart, b.outEnd, b.Output = end+1, oe, lines[end+2:oe]
			end = oe
		}
		blocks = append(blocks, b)
		i = end
	}
	if !in {
		return nil, fmt.Errorf("README.md has no %q section", walkthroughHeading)
	}
	return blocks, nil
}

// fenceEnd returns the index of the fence closing the block opened at lines[open].
func fenceEnd(lines []string, open int) (int, error) {
	for j := open + 1; j < len(lines); j++ {
		if lines[j] == "```" {
			return j, nil
		}
	}
	return 0, fmt.Errorf("README.md:%d: %s is never closed", open+1, lines[open])
}

// directives reads the comments on the lines right above the block opened at lines[open].
func (b *Block) directives(lines []string, open int) error {
	for i := open - 1; i >= 0 && strings.HasPrefix(lines[i], directivePrefix); i-- {
		if err := b.directive(lines[i], i+1); err != nil {
			return err
		}
	}
	return nil
}

// directive reads one comment, on line n.
func (b *Block) directive(line string, n int) error {
	d := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, directivePrefix), "-->"))
	switch word, rest, _ := strings.Cut(d, " "); word {
	case "unordered":
		b.Unordered = true
	case "skip":
		if rest == "" {
			return fmt.Errorf("README.md:%d: a skip directive must say why", n)
		}
		b.Skip = rest
	case "restart":
		b.Restart = strings.Fields(rest)
		for _, kv := range b.Restart {
			if name, _, ok := strings.Cut(kv, "="); !ok || name != strings.ToUpper(name) {
				return fmt.Errorf("README.md:%d: restart takes settings NAME=VALUE, not %q", n, kv)
			}
		}
	default:
		return fmt.Errorf("README.md:%d: unknown directive %q (want unordered, skip REASON or restart NAME=VALUE...)", n, d)
	}
	return nil
}

// Rewrite returns readme with each block's pasted output replaced by outputs[i] (blank lines left out; no
// ```text block for an empty output). blocks must come from Parse(readme); a nil outputs[i] keeps block
// i's pasted output (a skipped block).
func Rewrite(readme string, blocks []Block, outputs [][]string) string {
	lines := strings.Split(readme, "\n")
	var out []string
	next := 0
	for i, b := range blocks {
		keepTo := b.end
		if outputs[i] == nil && b.outEnd >= 0 {
			keepTo = b.outEnd
		}
		out = append(out, lines[next:keepTo+1]...)
		next = keepTo + 1
		if b.outEnd >= 0 {
			next = b.outEnd + 1
		}
		if outputs[i] == nil {
			continue
		}
		if got := pasteable(outputs[i]); len(got) > 0 {
			out = append(out, "```text")
			out = append(out, got...)
			out = append(out, "```")
		}
	}
	out = append(out, lines[next:]...)
	return strings.Join(out, "\n")
}

// pasteable is a run's output as README.md shows it: without blank lines and trailing spaces.
func pasteable(output []string) []string {
	var out []string
	for _, l := range output {
		if l = strings.TrimRight(l, " \t\r"); l != "" {
			out = append(out, l)
		}
	}
	return out
}
