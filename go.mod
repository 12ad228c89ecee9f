module github.com/dualpath/analytics-go

go 1.25.0

require (
	github.com/google/uuid v1.6.0
	github.com/klauspost/compress v1.20.1
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.15.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
