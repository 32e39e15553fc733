package hub

import (
	"sync"
	"testing"
	"time"
)

// manualTimer is a stall timer that never fires on its own.
type manualTimer struct {
	mu    *sync.Mutex
	f     func()
	armed bool
}

func (m *manualTimer) Reset(time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.armed
	m.armed = true
	return was
}

func (m *manualTimer) Stop() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.armed
	m.armed = false
	return was
}

// ManualStalls makes transfers stall only when the test says so, until the
// test ends: no clock runs out on a busy machine. The returned function
// fires every armed stall timer (each transfer in flight that has not
// finished) and returns how many it fired.
func ManualStalls(t testing.TB) (stall func() int) {
	var mu sync.Mutex
	var timers []*manualTimer
	prev := startStallTimer
	startStallTimer = func(_ time.Duration, f func()) stallTimer {
		m := &manualTimer{mu: &mu, f: f, armed: true}
		mu.Lock()
		defer mu.Unlock()
		timers = append(timers, m)
		return m
	}
	t.Cleanup(func() { startStallTimer = prev })
	return func() int {
		mu.Lock()
		var fire []func()
		for _, m := range timers {
			if m.armed {
				m.armed = false
				fire = append(fire, m.f)
			}
		}
		mu.Unlock()
		for _, f := range fire {
			f()
		}
		return len(fire)
	}
}
