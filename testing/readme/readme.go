// Package readme runs README.md's first-runtime path and every chapter of docs/guide as written and keeps
// their pasted outputs true.
//
// README.md's path (the "## Your first runtime" section and its subsections) and each guide chapter (the
// whole file) is a sequence of commands, each a ```sh block, and their outputs: the ```text block right after a ```sh block is that
// block's output, as a run printed it (blank lines left out); a ```sh block without one prints nothing.
// HTML comments on the lines right before a ```sh block tell the runner how to treat it:
//
//	<!-- readme-test: unordered -->          the output's lines are compared as a multiset (kubectl sorts
//	                                         by names that differ from run to run)
//	<!-- readme-test: skip REASON -->        the block is not run (REASON says why)
//	<!-- readme-test: restart ENV=V ... -->  `keb dev` is restarted with these settings before the block;
//	                                         the text above must tell the reader the same: "`ENV=V ... make run`"
//
// TestREADME runs README.md and every docs/guide chapter, each document in a bash of its own against a
// fresh `keb dev` of its own (a chapter sets what it needs itself, in its first block, and sees nothing
// another chapter did), several documents side by side (-stacks), and compares each output with the pasted
// one through the masks in mask.go; `make readme` runs the same and rewrites the pasted outputs instead.
package readme

import (
	"fmt"
	"path/filepath"
	"strings"
)

// walkthroughHeading opens the part of README.md that runs; the next "## " heading closes it. A guide
// chapter runs whole.
const walkthroughHeading = "## Your first runtime"

const directivePrefix = "<!-- readme-test:"

// Block is one ```sh block of the walkthrough and the output pasted after it.
type Block struct {
	// File is the document's name as failures show it (README.md, docs/guide/bindings.md).
	File string
	// Section is the nearest heading above the block.
	Section string
	// Line is the 1-based line of the block's opening fence in File.
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
func (b Block) Name() string { return fmt.Sprintf("%s:%d (%s)", b.File, b.Line, b.Section) }

// Parse returns the runnable ```sh blocks of the document file (README.md's first-runtime path; a guide
// chapter whole), in order.
func Parse(file, doc string) ([]Block, error) {
	lines := strings.Split(doc, "\n")
	whole := filepath.Base(file) != "README.md"
	var blocks []Block
	in, section, sectionStart := whole, "", 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case !whole && strings.HasPrefix(l, walkthroughHeading):
			in, section = true, strings.TrimPrefix(l, "## ")
			continue
		case !whole && in && strings.HasPrefix(l, "## "):
			return blocks, nil
		case !in:
			continue
		case strings.HasPrefix(l, "### ") || (whole && strings.HasPrefix(l, "#") && strings.HasPrefix(strings.TrimLeft(l, "#"), " ")):
			section, sectionStart = strings.TrimSpace(strings.TrimLeft(l, "#")), i
			continue
		case strings.HasPrefix(l, "```") && l != "```sh":
			// Any other fenced block (an output, a log excerpt, a file): skip to its end, so that a
			// fence inside cannot be taken for a ```sh block.
			end, err := fenceEnd(file, lines, i)
			if err != nil {
				return nil, err
			}
			i = end
			continue
		case l != "```sh":
			continue
		}
		b := Block{File: file, Section: section, Line: i + 1, outStart: -1, outEnd: -1}
		if err := b.directives(lines, i); err != nil {
			return nil, err
		}
		if b.Restart != nil {
			// The reader restarts `make run` by hand: the section must say how, in the same words.
			cmd := "`" + strings.Join(b.Restart, " ") + " make run`"
			if !strings.Contains(strings.Join(lines[sectionStart:i], "\n"), cmd) {
				return nil, fmt.Errorf("%s:%d: the section restarts keb dev but its text does not say %s", file, i+1, cmd)
			}
		}
		end, err := fenceEnd(file, lines, i)
		if err != nil {
			return nil, err
		}
		b.Script, b.end = strings.Join(lines[i+1:end], "\n")+"\n", end
		if end+1 < len(lines) && lines[end+1] == "```text" {
			oe, err := fenceEnd(file, lines, end+1)
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
		return nil, fmt.Errorf("%s has no %q section", file, walkthroughHeading)
	}
	return blocks, nil
}

// fenceEnd returns the index of the fence closing the block opened at lines[open].
func fenceEnd(file string, lines []string, open int) (int, error) {
	for j := open + 1; j < len(lines); j++ {
		if lines[j] == "```" {
			return j, nil
		}
	}
	return 0, fmt.Errorf("%s:%d: %s is never closed", file, open+1, lines[open])
}

// directives reads the comments on the lines right above the block opened at lines[open].
func (b *Block) directives(lines []string, open int) error {
	for i := open - 1; i >= 0 && strings.HasPrefix(lines[i], directivePrefix); i-- {
		if err := b.directive(b.File, lines[i], i+1); err != nil {
			return err
		}
	}
	return nil
}

// directive reads one comment, on line n.
func (b *Block) directive(file, line string, n int) error {
	d := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, directivePrefix), "-->"))
	switch word, rest, _ := strings.Cut(d, " "); word {
	case "unordered":
		b.Unordered = true
	case "skip":
		if rest == "" {
			return fmt.Errorf("%s:%d: a skip directive must say why", file, n)
		}
		b.Skip = rest
	case "restart":
		b.Restart = strings.Fields(rest)
		for _, kv := range b.Restart {
			if name, _, ok := strings.Cut(kv, "="); !ok || name != strings.ToUpper(name) {
				return fmt.Errorf("%s:%d: restart takes settings NAME=VALUE, not %q", file, n, kv)
			}
		}
	default:
		return fmt.Errorf("%s:%d: unknown directive %q (want unordered, skip REASON or restart NAME=VALUE...)", file, n, d)
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
