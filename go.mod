module github.com/dualpath/analytics-go

go 1.25.0

require (
	github.com/google/uuid v1.6.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/time v0.15.0 // indirect
)
