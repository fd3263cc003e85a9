package azblobstore

// SetPageSize makes List ask for pages of n blobs, so that tests paginate
// without writing thousands of blobs.
func SetPageSize(s *Store, n int32) { s.pageSize = n }
