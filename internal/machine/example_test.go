package machine_test

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/machine"
)

func ExampleCompare() {
	f := func(v float64) *float64 { return &v }
	quiet := &machine.State{Cores: 2, OtherCores: f(0.02), Peak: &machine.Sample{Load1: 0.3}}
	busy := &machine.State{Cores: 2, OtherCores: f(1.7), Peak: &machine.Sample{Load1: 9.8}}
	for _, d := range machine.Compare(quiet, busy) {
		fmt.Println(d)
	}
	_, why := busy.Busy(machine.DefaultBusyShare)
	fmt.Println(why)
	// Output:
	// load 0.3 vs 9.8 on 2 cores
	// other processes took 0.0 vs 1.7 cores while the engine ran
	// other processes took 1.7 of 2 cores while the engine ran (load 9.8)
}
