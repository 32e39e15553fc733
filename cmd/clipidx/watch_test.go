package main

import (
	"testing"
	"time"

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
	if err := im.ready(); err != nil {
		t.Fatal(err)
	}
	// Busy: the idle time passes without an unload.
	time.Sleep(150 * time.Millisecond)
	if !m.Loaded() {
		t.Fatal("the model was released during a build")
	}
	im.release()
	waitUnloaded(t, im)
	m2, err := im.acquire()
	if err != nil || m2 != m {
		t.Fatalf("acquire after the unload: %v (same face %v)", err, m2 == m)
	}
	if err := im.ready(); err != nil || !m2.Loaded() {
		t.Fatalf("the model did not load again: %v", err)
	}
	im.release()
}

// waitUnloaded waits until the watcher's model has released its towers.
func waitUnloaded(t *testing.T, im *idleModel) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for im.m.Loaded() {
		if time.Now().After(deadline) {
			t.Fatal("the model was not released after idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIdleModelBuildsWithoutWork: a build that embeds nothing (a
// catalog's journal written every few seconds ran one each time) held
// the model and started its idle time again: the model was never
// released. Now such builds neither load it nor keep it.
func TestIdleModelBuildsWithoutWork(t *testing.T) {
	model := fixtures.TinyModel(t)
	saved := g
	t.Cleanup(func() { g = saved })
	g = globals{model: model, device: "cpu", weights: "stored", precision: "f32"}
	im := &idleModel{idle: 200 * time.Millisecond}
	defer im.close()
	m, err := im.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := im.ready(); err != nil {
		t.Fatal(err)
	}
	im.release()
	// Builds with nothing to embed, far more often than the idle time.
	deadline := time.Now().Add(30 * time.Second)
	for m.Loaded() {
		if time.Now().After(deadline) {
			t.Fatal("builds that embed nothing kept the model loaded")
		}
		if _, err := im.acquire(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		im.release()
	}
	if _, err := im.acquire(); err != nil {
		t.Fatal(err)
	}
	im.release()
	if m.Loaded() {
		t.Error("a build that embeds nothing loaded the model")
	}
}
