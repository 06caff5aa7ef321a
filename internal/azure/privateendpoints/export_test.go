package privateendpoints

// The observer's counters, for the external tests.
var (
	ListsTotal  = listsTotal
	ListedTotal = listedTotal
)
