package plan

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"sync"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// A 5,000-endpoint request is about 600 KiB of JSON; encoding and gzipping
// it for each of 1,000 nodes took ten seconds of the plugin's CPU. All but
// a few hundred bytes of it are the same for every node: the endpoints
// (except the Pod UIDs of the node's own) and the Pod IPs. The encoder
// writes those once, as JSON and as gzip members, and per node only what
// differs. A gzip stream may be a series of members; the collector's
// reader (compress/gzip, multistream) reads them as one.

// encodeBlock is how many endpoints one shared part holds: small enough
// that a node's own endpoints make little of the request its own, large
// enough to compress well.
const encodeBlock = 100

// requestPart is a piece of a request's JSON and, when it is shared by
// every node, its gzip member.
type requestPart struct {
	json, gz []byte
}

// requestEncoder holds the shared parts of a template's requests.
type requestEncoder struct {
	once sync.Once
	err  error
	// open starts the request (and its endpoint list), blocks are the
	// endpoints in encodeBlock blocks, closeEndpoints ends the list,
	// podIPs is the "podIPs" member and its comma.
	open, closeEndpoints, podIPs requestPart
	blocks                       []requestPart
	// ownBlocks are, per node, the blocks holding its endpoints that get
	// a Pod UID in its request.
	ownBlocks map[string][]int
}

// gzipWriters are reused: a writer holds most of a megabyte of state, and
// a thousand nodes' requests take several members each.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gzipMember(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sharedPart is b with its gzip member.
func sharedPart(b []byte) (requestPart, error) {
	gz, err := gzipMember(b)
	return requestPart{json: b, gz: gz}, err
}

// blockJSON is endpoints [from, to) of the template, comma-joined, with
// the Pod UIDs of node's own endpoints ("" for none).
func (t *requestTemplate) blockJSON(from, to int, node string) ([]byte, error) {
	var buf bytes.Buffer
	for i := from; i < to; i++ {
		ep := t.base.Endpoints[i]
		if node != "" && ep.NodeName == node && ep.PodName != "" {
			ep.PodUID = t.podUID[ep.PodName]
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		j, err := json.Marshal(ep)
		if err != nil {
			return nil, err
		}
		buf.Write(j)
	}
	return buf.Bytes(), nil
}

func (t *requestTemplate) prepareEncoder() {
	e := &t.enc
	eps := t.base.Endpoints
	e.ownBlocks = map[string][]int{}
	var err error
	for b := 0; b*encodeBlock < len(eps); b++ {
		from, to := b*encodeBlock, min((b+1)*encodeBlock, len(eps))
		for _, ep := range eps[from:to] {
			if ep.NodeName != "" && ep.PodName != "" && t.podUID[ep.PodName] != "" {
				if own := e.ownBlocks[ep.NodeName]; len(own) == 0 || own[len(own)-1] != b {
					e.ownBlocks[ep.NodeName] = append(own, b)
				}
			}
		}
		j, jerr := t.blockJSON(from, to, "")
		if jerr != nil {
			e.err = jerr
			return
		}
		p, perr := sharedPart(j)
		if perr != nil {
			e.err = perr
			return
		}
		e.blocks = append(e.blocks, p)
	}
	open := []byte(`{`)
	if len(eps) > 0 {
		open = []byte(`{"endpoints":[`)
		if e.closeEndpoints, err = sharedPart([]byte(`],`)); err != nil {
			e.err = err
			return
		}
	}
	if e.open, err = sharedPart(open); err != nil {
		e.err = err
		return
	}
	if len(t.base.PodIPs) > 0 {
		j, jerr := json.Marshal(t.base.PodIPs)
		if jerr != nil {
			e.err = jerr
			return
		}
		if e.podIPs, err = sharedPart(append(append([]byte(`"podIPs":`), j...), ',')); err != nil {
			e.err = err
		}
	}
}

// encodeForNode is node's request (with client, when set), the one
// forNode builds, as JSON when it is small enough to travel as plain JSON
// (collectorapi.RequestInlineMax) and gzipped otherwise.
func (t *requestTemplate) encodeForNode(node string, client *collectorapi.ClientPod) ([]byte, error) {
	if t.in.Service == nil {
		req := t.forNode(node)
		req.Client = client
		return json.Marshal(req)
	}
	t.enc.once.Do(t.prepareEncoder)
	e := &t.enc
	if e.err != nil {
		return nil, e.err
	}
	parts := []requestPart{e.open}
	own := map[int]bool{}
	for _, b := range e.ownBlocks[node] {
		own[b] = true
	}
	for b, p := range e.blocks {
		if own[b] {
			j, err := t.blockJSON(b*encodeBlock, min((b+1)*encodeBlock, len(t.base.Endpoints)), node)
			if err != nil {
				return nil, err
			}
			p = requestPart{json: j}
		}
		parts = append(parts, p)
	}
	if len(e.blocks) > 0 {
		parts = append(parts, e.closeEndpoints)
	}
	if e.podIPs.json != nil {
		parts = append(parts, e.podIPs)
	}
	// The node's own fields: everything but the endpoints and Pod IPs,
	// without the opening brace the shared part holds.
	rest := t.base
	rest.Endpoints, rest.PodIPs = nil, nil
	rest.NodeName = node
	rest.NodeAddresses = t.nodePortAddresses(node)
	rest.Client = client
	j, err := json.Marshal(rest)
	if err != nil {
		return nil, err
	}
	parts = append(parts, requestPart{json: j[1:]})

	size := 0
	for _, p := range parts {
		size += len(p.json)
	}
	var out bytes.Buffer
	if size <= collectorapi.RequestInlineMax {
		for _, p := range parts {
			out.Write(p.json)
		}
		return out.Bytes(), nil
	}
	for _, p := range parts {
		gz := p.gz
		if gz == nil {
			if gz, err = gzipMember(p.json); err != nil {
				return nil, err
			}
		}
		out.Write(gz)
	}
	return out.Bytes(), nil
}
