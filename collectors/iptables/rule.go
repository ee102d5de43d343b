package iptables

import (
	"fmt"
	"strconv"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// splitWords splits an iptables-save line into words. Double-quoted words may
// hold spaces; a backslash inside quotes escapes the next character (that is
// how iptables-save writes '"' and '\' inside comments).
func splitWords(line string) ([]string, error) {
	var words []string
	var b strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote:
			if c == '\\' && i+1 < len(line) {
				i++
				b.WriteByte(line[i])
			} else if c == '"' {
				inQuote = false
			} else {
				b.WriteByte(c)
			}
		case c == '"':
			inQuote, inWord = true, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quote")
	}
	if inWord {
		words = append(words, b.String())
	}
	return words, nil
}

// flags that take no argument in the rules kube-proxy writes.
var noArgOptions = map[string]bool{
	"--rcheck": true, "--set": true, "--reap": true, "--rsource": true, "--rdest": true,
	"--update": true, "--remove": true, "--random-fully": true, "--random": true, "--persistent": true,
}

// ParseRule parses one "-A CHAIN …" line as printed by iptables-save or
// `iptables -S`. It never fails on options it does not know: they are kept
// in Options. Lines that are not "-A" rules are an error.
func ParseRule(line string) (collectorapi.IPTablesRule, error) {
	r := collectorapi.IPTablesRule{Raw: line}
	if !strings.HasPrefix(line, "-A ") {
		return r, fmt.Errorf("not a rule line")
	}
	words, err := splitWords(line)
	if err != nil {
		return r, err
	}
	if len(words) < 2 || words[0] != "-A" || words[1] == "" {
		return r, fmt.Errorf("not a rule line")
	}
	r.Chain = words[1]
	var module string
	for i := 2; i < len(words); {
		neg := false
		if words[i] == "!" {
			neg = true
			i++
			if i >= len(words) {
				return r, fmt.Errorf("dangling '!'")
			}
		}
		name := words[i]
		if !strings.HasPrefix(name, "-") {
			return r, fmt.Errorf("unexpected word %q", name)
		}
		i++
		var args []string
		if !noArgOptions[name] {
			for i < len(words) && (!strings.HasPrefix(words[i], "-") || isNumberish(words[i])) && words[i] != "!" {
				args = append(args, words[i])
				i++
			}
		}
		opt := collectorapi.IPTablesOption{Name: name, Negated: neg, Args: args}
		r.Options = append(r.Options, opt)
		arg := ""
		if len(args) > 0 {
			arg = args[0]
		}
		switch name {
		case "-m", "--match":
			module = arg
			if module == "recent" && r.Recent == nil {
				r.Recent = &collectorapi.IPTablesRecent{}
			}
		case "-s", "--source":
			r.Source, r.NotSource = arg, neg
		case "-d", "--destination":
			r.Destination, r.NotDest = arg, neg
		case "-p", "--protocol":
			r.Protocol = arg
		case "--dport", "--destination-port":
			r.DPort = arg
		case "--comment":
			r.Comment = arg
		case "--dst-type":
			r.DstType, r.NotDstType = arg, neg
		case "--src-type":
			r.SrcType = arg
		case "--probability":
			r.Probability = arg
			if v, err := strconv.ParseFloat(arg, 64); err == nil {
				r.ProbabilityValue = &v
			}
		case "-j", "--jump":
			r.Jump = arg
		case "-g", "--goto":
			r.Goto = arg
		case "--to-destination":
			r.ToDestination = arg
		case "--set-xmark", "--or-mark", "--xor-mark", "--set-mark":
			r.Mark = arg
		case "--mark":
			r.Mark = arg
		case "--reject-with":
			r.RejectWith = arg
		}
		if module == "recent" && r.Recent != nil {
			switch name {
			case "--name":
				r.Recent.Name = arg
			case "--rcheck":
				r.Recent.Check = true
			case "--set":
				r.Recent.Set = true
			case "--seconds":
				r.Recent.Seconds, _ = strconv.Atoi(arg)
			case "--reap":
				r.Recent.Reap = true
			case "--mask":
				r.Recent.Mask = arg
			case "--rsource":
				r.Recent.Source = true
			}
		}
	}
	return r, nil
}

// isNumberish accepts negative numbers as arguments (none in kube-proxy's
// rules, but a fuzzer found that treating "-1" as an option is surprising).
func isNumberish(w string) bool {
	if len(w) < 2 || w[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(w[1:], 64)
	return err == nil
}
