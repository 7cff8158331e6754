package cli

type initCmd struct{}
type listCmd struct{}
type showCmd struct{}
