# syntax=docker/dockerfile:1
# The operator image: a static binary on distroless, running as non-root.
# Build: docker build -t azure-private-endpoint-operator:dev .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/azure-private-endpoint-operator ./cmd/azure-private-endpoint-operator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/azure-private-endpoint-operator /azure-private-endpoint-operator
USER 65532:65532
ENTRYPOINT ["/azure-private-endpoint-operator"]
