package main

import (
	"testing"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// The watcher's model is released after --idle-unload without a build,
// not during one, and loads again for the next.
func TestIdleModelUnloads(t *testing.T) {
	model := fixtures.TinyModel(t)
	saved := g
	t.Cleanup(func() { g = saved })
	g = globals{model: model, device: "cpu", weights: "stored", precision: "f32"}
	im := &idleModel{idle: 50 * time.Millisecond}
	defer im.close()
	m, err := im.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Load(clipnpu.ImageTower); err != nil {
		t.Fatal(err)
	}
	// Busy: the idle time passes without an unload.
	time.Sleep(150 * time.Millisecond)
	if !m.Loaded() {
		t.Fatal("the model was released during a build")
	}
	im.release()
	deadline := time.Now().Add(30 * time.Second)
	for m.Loaded() {
		if time.Now().After(deadline) {
			t.Fatal("the model was not released after idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m2, err := im.acquire()
	if err != nil || m2 != m {
		t.Fatalf("acquire after the unload: %v (same face %v)", err, m2 == m)
	}
	if err := m2.Load(clipnpu.ImageTower); err != nil || !m2.Loaded() {
		t.Fatalf("the model did not load again: %v", err)
	}
	im.release()
}
