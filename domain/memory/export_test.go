package memory

// SubscriberCount exposes the number of live run-event subscriptions to
// the tests of package memory_test.
func (s *Store) SubscriberCount() int { return s.subscriberCount() }
