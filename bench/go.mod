module github.com/nodeid/nodeid/bench

go 1.26.0

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/nodeid/nodeid v0.0.0-00010101000000-000000000000
	github.com/sony/sonyflake/v2 v2.2.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/nodeid/nodeid => ../
