package chanmap

import (
	"context"
	"strconv"
	"testing"
	"time"
)

func TestMap(t *testing.T) {
	if Map(context.Background(), (<-chan int)(nil), strconv.Itoa) != nil {
		t.Error("a nil channel was not mapped to nil")
	}

	in := make(chan int)
	out := Map(context.Background(), in, strconv.Itoa)
	go func() {
		for i := 1; i <= 3; i++ {
			in <- i
		}
		close(in)
	}()
	var got []string
	for v := range out { // ends when in is closed
		got = append(got, v)
	}
	if len(got) != 3 || got[0] != "1" || got[2] != "3" {
		t.Errorf("got %q, want [1 2 3]", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	out = Map(ctx, make(chan int), strconv.Itoa)
	cancel()
	select {
	case _, ok := <-out:
		if ok {
			t.Error("a value came out of an idle channel")
		}
	case <-time.After(5 * time.Second):
		t.Error("the output was not closed when the context ended")
	}
}
