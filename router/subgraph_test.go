package router_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// fakeSubgraph is a federation subgraph answered by hand over plain net/http:
// `_service`, `_entities` and its own root fields, from Go values. It executes
// the router's operation without a schema: objects are maps that name their
// type in "__typename", a field's value is read by name (a func(args) any is
// called with the field's arguments), and an inline fragment applies when its
// type condition is the object's type or one that type belongs to (isA).
//
// It records every operation it is sent, so a test can say which subgraphs a
// query reached and what they were asked.
type fakeSubgraph struct {
	sdl string
	// query holds the root fields besides _service and _entities.
	query map[string]any
	// entities resolves a representation of the named type. An error (or a
	// type with no resolver) answers a GraphQL error for that entity: a
	// planner must never send a representation a subgraph cannot resolve.
	entities map[string]func(rep map[string]any) (map[string]any, error)
	// isA maps a concrete type to the abstract types it belongs to.
	isA map[string][]string

	mu    sync.Mutex
	calls []subgraphCall
}

type subgraphCall struct {
	Query     string
	Variables map[string]any
}

// Calls returns the operations sent so far, and forgets them.
func (s *fakeSubgraph) Calls() []subgraphCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *fakeSubgraph) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, subgraphCall{Query: req.Query, Variables: req.Variables})
	s.mu.Unlock()
	e := &fakeExec{s: s, vars: req.Variables}
	doc, err := parser.ParseQuery(&ast.Source{Input: req.Query})
	var out bytes.Buffer
	switch {
	case err != nil:
		e.errs = append(e.errs, err.Error())
	case len(doc.Operations) == 0:
		e.errs = append(e.errs, "no operation")
	default:
		e.doc = doc
		op := doc.Operations[0]
		if req.OperationName != "" {
			op = doc.Operations.ForName(req.OperationName)
		}
		root := map[string]any{"__typename": "Query", "_service": map[string]any{"sdl": s.sdl}, "_entities": e.entities}
		for name, v := range s.query {
			root[name] = v
		}
		out.WriteString(`{"data":`)
		e.object(&out, root, op.SelectionSet, nil)
	}
	if out.Len() == 0 {
		out.WriteString(`{"data":null`)
	}
	if len(e.errs) > 0 {
		var list []map[string]any
		for _, msg := range e.errs {
			list = append(list, map[string]any{"message": msg})
		}
		b, _ := json.Marshal(list)
		out.WriteString(`,"errors":`)
		out.Write(b)
	}
	out.WriteString("}")
	w.Header().Set("Content-Type", "application/json")
	w.Write(out.Bytes())
}

// fakeExec is one operation's execution.
type fakeExec struct {
	s    *fakeSubgraph
	doc  *ast.QueryDocument
	vars map[string]any
	errs []string
}

func (e *fakeExec) entities(args map[string]any) any {
	reps, _ := args["representations"].([]any)
	out := make([]any, len(reps))
	for i, r := range reps {
		rep, _ := r.(map[string]any)
		typ, _ := rep["__typename"].(string)
		resolve := e.s.entities[typ]
		if resolve == nil {
			e.errs = append(e.errs, fmt.Sprintf("this subgraph resolves no entity of type %q", typ))
			continue
		}
		obj, err := resolve(rep)
		if err != nil {
			e.errs = append(e.errs, fmt.Sprintf("representation %v: %v", rep, err))
			continue
		}
		if obj != nil {
			if _, ok := obj["__typename"]; !ok {
				obj["__typename"] = typ
			}
		}
		out[i] = obj
	}
	return out
}

// matches reports whether a type condition applies to an object's type.
func (e *fakeExec) matches(cond, typ string) bool {
	return cond == "" || cond == typ || slices.Contains(e.s.isA[typ], cond)
}

// collect groups a selection set's fields by response name, fragments applied.
func (e *fakeExec) collect(set ast.SelectionSet, typ string, names *[]string, fields map[string][]*ast.Field) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			name := s.Alias
			if name == "" {
				name = s.Name
			}
			if _, ok := fields[name]; !ok {
				*names = append(*names, name)
			}
			fields[name] = append(fields[name], s)
		case *ast.InlineFragment:
			if e.matches(s.TypeCondition, typ) {
				e.collect(s.SelectionSet, typ, names, fields)
			}
		case *ast.FragmentSpread:
			if f := e.doc.Fragments.ForName(s.Name); f != nil && e.matches(f.TypeCondition, typ) {
				e.collect(f.SelectionSet, typ, names, fields)
			}
		}
	}
}

func (e *fakeExec) object(out *bytes.Buffer, obj map[string]any, set ast.SelectionSet, path []string) {
	typ, _ := obj["__typename"].(string)
	var names []string
	fields := map[string][]*ast.Field{}
	e.collect(set, typ, &names, fields)
	out.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			out.WriteByte(',')
		}
		f := fields[name][0]
		out.WriteString(strconv.Quote(name))
		out.WriteByte(':')
		v := obj[f.Name]
		if fn, ok := v.(func(map[string]any) any); ok {
			args := map[string]any{}
			for _, a := range f.Arguments {
				val, err := a.Value.Value(e.vars)
				if err != nil {
					e.errs = append(e.errs, err.Error())
				}
				args[a.Name] = val
			}
			v = fn(args)
		}
		var sub ast.SelectionSet
		for _, f := range fields[name] {
			sub = append(sub, f.SelectionSet...)
		}
		e.value(out, v, sub, append(path, name))
	}
	out.WriteByte('}')
}

func (e *fakeExec) value(out *bytes.Buffer, v any, set ast.SelectionSet, path []string) {
	switch v := v.(type) {
	case nil:
		out.WriteString("null")
	case map[string]any:
		if len(set) == 0 {
			e.errs = append(e.errs, fmt.Sprintf("%s: an object needs a selection", strings.Join(path, ".")))
			out.WriteString("null")
			return
		}
		e.object(out, v, set, path)
	case []map[string]any:
		list := make([]any, len(v))
		for i, x := range v {
			list[i] = x
		}
		e.value(out, list, set, path)
	case []any:
		out.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			e.value(out, x, set, append(path, strconv.Itoa(i)))
		}
		out.WriteByte(']')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			e.errs = append(e.errs, err.Error())
			b = []byte("null")
		}
		out.Write(b)
	}
}

// entityByID resolves representations by their "id" from a table of objects.
func entityByID(objects ...map[string]any) func(rep map[string]any) (map[string]any, error) {
	byID := map[string]map[string]any{}
	for _, o := range objects {
		byID[o["id"].(string)] = o
	}
	return func(rep map[string]any) (map[string]any, error) {
		id, ok := rep["id"].(string)
		if !ok {
			keys := make([]string, 0, len(rep))
			for k := range rep {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, fmt.Errorf("no id in the representation (it has %v)", keys)
		}
		o, ok := byID[id]
		if !ok {
			return nil, nil
		}
		return clone(o), nil
	}
}

// clone copies an object one level deep, so a resolver may add to it.
func clone(o map[string]any) map[string]any {
	c := make(map[string]any, len(o))
	for k, v := range o {
		c[k] = v
	}
	return c
}
