// Package registrar reserves names for the ids that own them, so that a
// second creation of the same CRI name fails fast with AlreadyExists.
package registrar

import (
	"fmt"
	"sync"
)

// Registrar maps names to ids and ids to names, one to one.
type Registrar struct {
	mu    sync.Mutex
	names map[string]string // name -> id
	ids   map[string]string // id -> name
}

// New returns an empty Registrar.
func New() *Registrar {
	return &Registrar{names: map[string]string{}, ids: map[string]string{}}
}

// ErrReserved is returned (wrapped) by Reserve when a name is taken.
type ErrReserved struct {
	Name, Owner string
}

func (e *ErrReserved) Error() string {
	return fmt.Sprintf("name %q is reserved for %q", e.Name, e.Owner)
}

// Reserve reserves name for id. Reserving the same pair again is a no-op; a
// name held by another id, or an id holding another name, is an error.
func (r *Registrar) Reserve(name, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if owner, ok := r.names[name]; ok {
		if owner == id {
			return nil
		}
		return &ErrReserved{Name: name, Owner: owner}
	}
	if held, ok := r.ids[id]; ok {
		return fmt.Errorf("id %q already holds name %q", id, held)
	}
	r.names[name] = id
	r.ids[id] = name
	return nil
}

// Release frees the name held by id, if any.
func (r *Registrar) Release(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name, ok := r.ids[id]; ok {
		delete(r.names, name)
		delete(r.ids, id)
	}
}

// ReleaseIDs frees the names held by the ids that match.
func (r *Registrar) ReleaseIDs(match func(id string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, name := range r.ids {
		if match(id) {
			delete(r.names, name)
			delete(r.ids, id)
		}
	}
}

// ReleaseName frees name, if reserved.
func (r *Registrar) ReleaseName(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.names[name]; ok {
		delete(r.names, name)
		delete(r.ids, id)
	}
}

// ReleaseNameOf frees name if id holds it (not an id that reserved it
// since).
func (r *Registrar) ReleaseNameOf(name, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names[name] == id {
		delete(r.names, name)
		delete(r.ids, id)
	}
}

// Owner returns the id holding name.
func (r *Registrar) Owner(name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.names[name]
	return id, ok
}
