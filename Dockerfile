# Multi-stage build: a static keb binary on a minimal base, run as non-root.
# Without a Docker engine, `make image` builds the equivalent image (same binary path, user 65532, entrypoint
# and command) from the binary alone: cmd/keb-image, checked by its test.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X github.com/kyma-keb/keb/internal/buildinfo.Commit=${COMMIT}" -o /out/keb ./cmd/keb

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/keb /usr/local/bin/keb
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/keb"]
CMD ["serve"]
