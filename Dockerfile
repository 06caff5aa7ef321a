# syntax=docker/dockerfile:1
# The operator image for those who build with a container engine:
#   docker build -t azure-private-endpoint-operator:dev .
# `make image` builds the equivalent image without one (hack/image: the same
# context, a static binary on an empty base, user 65532); make test builds
# and checks that one. Both take exactly what .dockerignore admits.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/azure-private-endpoint-operator/ cmd/azure-private-endpoint-operator/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w -X main.version=$VERSION" -o /out/azure-private-endpoint-operator ./cmd/azure-private-endpoint-operator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/azure-private-endpoint-operator /azure-private-endpoint-operator
USER 65532:65532
ENTRYPOINT ["/azure-private-endpoint-operator"]
