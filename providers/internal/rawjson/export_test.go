package rawjson

// CheckNames exposes checkNames to the benchmarks.
var CheckNames = checkNames

// The name comparisons, for TestCompareASCIIAgreesWithCompareRaw.
var (
	CompareRaw   = compareRaw
	CompareASCII = compareASCII
	FoldKey      = foldKey
	UpperASCII   = upperASCII
)
