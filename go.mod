module github.com/nodeid/nodeid

go 1.26
