.PHONY: proto test vet build fuzz

PROTOS := $(wildcard api/*.proto)

proto:
	PATH="$$PATH:$$(go env GOPATH)/bin" protoc -I . \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		$(PROTOS)

build:
	go build ./...

vet:
	go vet ./...

test: vet
	go test -race ./...
