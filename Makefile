.PHONY: proto test vet build fuzz

PROTOS := $(wildcard api/*.proto)
# Hadoop's own .proto files (vendored; api/hadoop/doc.go says what changed):
# messages only, no gRPC stubs, since Hadoop IPC is not gRPC.
HADOOP_PROTOS := $(wildcard api/hadoop/common/*.proto api/hadoop/hdfs/*.proto)

proto:
	PATH="$$PATH:$$(go env GOPATH)/bin" protoc -I . \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		$(PROTOS)
	PATH="$$PATH:$$(go env GOPATH)/bin" protoc -I . \
		--go_out=. --go_opt=paths=source_relative \
		$(HADOOP_PROTOS)

build:
	go build ./...

vet:
	go vet ./...

test: vet
	go test -race ./...

# Fuzz targets (pkg:Name), each run for FUZZTIME one after another. Their
# committed seeds (testdata/fuzz/<Name>/) run as plain tests in `make test`.
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./lbm:FuzzReadRecords \
	./lbm:FuzzReplayPlainEncrypted \
	./security:FuzzVerify \
	./security:FuzzPublicKeyUnmarshal \
	./security:FuzzParseClaims \
	./security:FuzzParseAccess \
	./namespace:FuzzValidatePath \
	./namespace:FuzzReadImage \
	./namenode:FuzzClientRequests \
	./datatransfer:FuzzReadPacket \
	./datatransfer:FuzzConn

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg) for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done
