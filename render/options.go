// Package render turns one trace.ServiceTrace into human text (lipgloss),
// JSON or YAML. It is the only package that writes results; every format
// renders the same struct, so they carry the same information.
package render

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Color modes of --color.
const (
	ColorAuto   = "auto"
	ColorAlways = "always"
	ColorNever  = "never"
)

// Output formats of -o; "" is human text.
const (
	FormatText = ""
	FormatWide = "wide"
	FormatJSON = "json"
	FormatYAML = "yaml"
	FormatSVG  = "svg"
)

// Formats lists the accepted -o values (for validation and completion).
// wide is the text view with every check's evidence, kubectl's word for
// "the same view, with more"; svg is the path and the grid as a picture.
var Formats = []string{FormatWide, FormatJSON, FormatYAML, FormatSVG}

// ColorModes lists the accepted --color values.
var ColorModes = []string{ColorAuto, ColorAlways, ColorNever}

// TextOptions decide how the text view looks. Build them with DecideTextOptions.
type TextOptions struct {
	// Color turns ANSI colors on.
	Color bool
	// ASCII replaces the Unicode glyphs (✔ ✖ ! – ? →) with [ok] [FAIL] [warn]
	// [skip] [??] and ->.
	ASCII bool
	// Details shows every check's evidence and every endpoint up to
	// MaxEndpoints, as -o wide asks; by default a passing layer is one line.
	Details bool
	// MaxEndpoints bounds the endpoint lines of the text view; JSON and YAML
	// list them all. Zero means DefaultMaxEndpoints; negative means no bound.
	MaxEndpoints int
}

// DefaultMaxEndpoints is how many endpoints the text view lists.
const DefaultMaxEndpoints = 20

// DecideTextOptions is svctrace's whole color and glyph policy:
//
//   - color: "always" on, "never" off, "auto" on only when the output is a
//     terminal, NO_COLOR is empty and TERM is not "dumb";
//   - glyphs: Unicode only when the output is a terminal that is not
//     "dumb", the locale (LC_ALL, else LC_CTYPE, else LANG) names UTF-8 and
//     --color is not "never"; ASCII otherwise, so piped output, logs, dumb
//     terminals and --color never get plain ASCII pictures.
//
// lipgloss's own environment detection is not used: render sets the
// renderer's profile from these options.
func DecideTextOptions(color string, isTTY bool, getenv func(string) string) (TextOptions, error) {
	var o TextOptions
	switch color {
	case ColorAlways:
		o.Color = true
	case ColorNever:
	case ColorAuto, "":
		o.Color = isTTY && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
	default:
		return o, fmt.Errorf("invalid --color %q: must be one of %s", color, strings.Join(ColorModes, ", "))
	}
	o.ASCII = !isTTY || !utf8Locale(getenv) || getenv("TERM") == "dumb" || color == ColorNever
	return o, nil
}

func utf8Locale(getenv func(string) string) bool {
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(k); v != "" {
			v = strings.ToLower(v)
			return strings.Contains(v, "utf-8") || strings.Contains(v, "utf8")
		}
	}
	return false
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
