package model

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o types.gen.go openapi.yaml
//go:generate go run ../cmd/proto-gen -out pb edgeplane.proto
