// Package cliexample reads the Example text of kubectl-svctrace's cobra
// commands the way a user copies it, so unit and end-to-end tests can check
// that every example still parses with the flags of the command it runs, and
// run it. The layout it accepts is kubectl's: blocks separated by blank
// lines, each opened by one or more "# comment" lines, then the command lines.
package cliexample

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Prefix starts every command line of an example.
const Prefix = "kubectl svctrace"

// Line is one command line of an example.
type Line struct {
	// Comment is the block's "# …" text (the lines joined by a space).
	Comment string
	// Text is the line as written, without its indentation.
	Text string
	// Args are the words after Prefix, as a shell would split them.
	Args []string
}

// Parse splits an Example into its command lines. It fails on a block whose
// first line is not a "# comment", on a block with no command line, and on a
// line that is neither a comment nor a command starting with Prefix.
func Parse(example string) ([]Line, error) {
	var lines []Line
	var comment []string
	commands := 0
	inBlock := false
	endBlock := func(n int) error {
		if inBlock && commands == 0 {
			return fmt.Errorf("line %d: the example block %q has no %q command line", n, strings.Join(comment, " "), Prefix)
		}
		inBlock, commands, comment = false, 0, nil
		return nil
	}
	all := strings.Split(example, "\n")
	for i, raw := range all {
		n := i + 1
		text := strings.TrimSpace(raw)
		switch {
		case text == "":
			if err := endBlock(n); err != nil {
				return nil, err
			}
		case strings.HasPrefix(text, "#"):
			if commands > 0 {
				return nil, fmt.Errorf("line %d: comment %q after the block's commands: separate the examples with a blank line", n, text)
			}
			inBlock = true
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(text, "#")))
		case !inBlock:
			return nil, fmt.Errorf("line %d: %q is not preceded by a # comment line", n, text)
		default:
			words, err := Split(text)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			prefix := strings.Fields(Prefix)
			if len(words) < len(prefix) || strings.Join(words[:len(prefix)], " ") != Prefix {
				return nil, fmt.Errorf("line %d: %q does not start with %q", n, text, Prefix)
			}
			commands++
			lines = append(lines, Line{Comment: strings.Join(comment, " "), Text: text, Args: words[len(prefix):]})
		}
	}
	if err := endBlock(len(all)); err != nil {
		return nil, err
	}
	return lines, nil
}

// Split breaks a command line into words like a POSIX shell without
// expansions: blanks separate words, single and double quotes group, and a
// word starting with # begins a comment that runs to the end of the line.
func Split(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words, nil
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// Commands returns root and every command below it, parents first.
func Commands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		out = append(out, Commands(c)...)
	}
	return out
}

// Resolve does what cobra does with the line before running it: it finds
// the command the words name (Find), parses the words with that command's
// own flag set (ParseFlags: an unknown flag or a flag without its value
// fails) and checks the positional arguments against the command's Args.
// It returns the command and its positional arguments. The flags of the
// returned command hold the parsed values, so use a fresh root per line.
func Resolve(root *cobra.Command, args []string) (*cobra.Command, []string, error) {
	c, rest, err := root.Find(args)
	if err != nil {
		return nil, nil, err
	}
	if err := c.ParseFlags(rest); err != nil {
		return c, nil, fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	positional := c.Flags().Args()
	if err := c.ValidateArgs(positional); err != nil {
		return c, nil, fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	return c, positional, nil
}

// IsWithin reports whether c is the command with that CommandPath or one
// below it (paths, not pointers: Resolve works on a fresh root per line).
func IsWithin(c *cobra.Command, path string) bool {
	p := c.CommandPath()
	return p == path || strings.HasPrefix(p, path+" ")
}
