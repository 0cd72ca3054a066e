package kubeletsvc

import "google.golang.org/grpc"

// streamBatch is how many items each message of a Stream* call carries.
const streamBatch = 500

// sendBatches sends items in messages of at most streamBatch items, each
// made by wrap; no message when there are none (the stream then ends).
func sendBatches[T, R any](stream grpc.ServerStreamingServer[R], items []T, wrap func([]T) *R) error {
	for len(items) > 0 {
		n := min(len(items), streamBatch)
		if err := stream.Send(wrap(items[:n])); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}
