package gcsstore

// SetPageSize makes List ask for pages of n objects, so that tests paginate
// without writing thousands of objects.
func SetPageSize(s *Store, n int) { s.pageSize = n }
