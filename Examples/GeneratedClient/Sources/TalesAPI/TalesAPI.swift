// The types and client of the Tale Generator API are generated at build time
// by swift-openapi-generator's plugin from `openapi.yaml`, which is
// `doppel export ../../contracts/tales.yaml` (`.ci/run` checks it is current).
