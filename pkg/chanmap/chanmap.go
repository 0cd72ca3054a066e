// Package chanmap forwards the values of one channel to another, converted,
// until either side is done: the glue between the terminal-resize channels
// of the streaming server, stage0 and stage1's control client.
package chanmap

import "context"

// Map returns a channel that receives f(v) for every v received from in; it
// is closed when in is closed or ctx ends. A nil in gives a nil channel.
func Map[In, Out any](ctx context.Context, in <-chan In, f func(In) Out) <-chan Out {
	if in == nil {
		return nil
	}
	out := make(chan Out)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case v, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- f(v):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
