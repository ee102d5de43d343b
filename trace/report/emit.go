package report

import "fmt"

// Emitter adds catalog checks to a trace. Both judges, the API-side one and
// the node one, emit through it, so a check's layer, status, templates and
// evidence are decided in one place.
type Emitter struct {
	trace *ServiceTrace
	base  Args
}

// NewEmitter returns an Emitter that adds checks to t and fills every template
// with base (the placeholders any check may use) before the check's own args.
func NewEmitter(t *ServiceTrace, base Args) *Emitter {
	return &Emitter{trace: t, base: base}
}

// maxRaw caps the raw evidence lines a check carries.
const maxRaw = 40

// Emit adds the catalog check code to the catalog's layer and returns it, so
// the caller can attach a cause or an explanation.
func (e *Emitter) Emit(code string, args Args, fields ...Field) *Check {
	return e.add(e.NewCheck(code, args, fields...))
}

// EmitNode adds the catalog check code for node to the catalog's layer.
func (e *Emitter) EmitNode(code, node string, args Args, raw []string, fields ...Field) *Check {
	return e.add(e.NewNodeCheck(code, node, args, raw, fields...))
}

// NewCheck is the check Emit would add, for a caller that places it itself.
func (e *Emitter) NewCheck(code string, args Args, fields ...Field) Check {
	return NewCheck(code, e.args(nil, args), fields...)
}

// NewNodeCheck is the check EmitNode would add: the {node} placeholder is
// node, and raw lines, when given, become its evidence (the first 40 and a
// count of the rest).
func (e *Emitter) NewNodeCheck(code, node string, args Args, raw []string, fields ...Field) Check {
	c := NewCheck(code, e.args(Args{"node": node}, args), fields...)
	c.Node = node
	if len(raw) > 0 {
		if c.Evidence == nil {
			c.Evidence = &Evidence{}
		}
		if len(raw) > maxRaw {
			raw = append(raw[:maxRaw:maxRaw], fmt.Sprintf("… %d more", len(raw)-maxRaw))
		}
		c.Evidence.Raw = raw
	}
	return c
}

func (e *Emitter) add(c Check) *Check {
	l := e.trace.Layer(Catalog[c.Code].Layer)
	l.Add(c)
	return &l.Checks[len(l.Checks)-1]
}

// args merges the base placeholders, then extra, then the check's own.
func (e *Emitter) args(extra, a Args) Args {
	out := make(Args, len(e.base)+len(extra)+len(a))
	for _, m := range []Args{e.base, extra, a} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
