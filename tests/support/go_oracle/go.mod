module goracle

go 1.22
