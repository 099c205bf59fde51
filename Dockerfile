# A small image of `doppel`, built from this checkout. Not built on the
# development machine (no Docker there): written to the conventions of
# Swift server images (a swift:*-noble builder, an ubuntu:noble runtime,
# the Swift runtime linked statically by scripts/release.sh).
#
#   docker build -t doppel .
#   docker run --rm -p 8000:8000 -v "$PWD/contracts:/contracts" doppel serve /contracts/tales.yaml --host 0.0.0.0
FROM swift:6.1-noble AS build
# Foundation's networking (the MCP SDK imports it) links libcurl.
RUN apt-get update && apt-get install -y --no-install-recommends libcurl4-openssl-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN bash scripts/release.sh && mkdir /out && tar -C /out -xzf dist/doppel-*.tar.gz

FROM ubuntu:noble
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libstdc++6 libcurl4 \
    && rm -rf /var/lib/apt/lists/* && useradd --system --uid 1000 doppel
COPY --from=build /out/doppel /usr/local/bin/doppel
USER doppel
EXPOSE 8000
ENTRYPOINT ["doppel"]
CMD ["--help"]
