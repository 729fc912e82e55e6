package rawjson

// CheckNames exposes checkNames to the benchmarks.
var CheckNames = checkNames
