package hoststate_test

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/hoststate"
)

func ExampleCompare() {
	f := func(v float64) *float64 { return &v }
	quiet := &hoststate.State{Cores: 2, OtherCores: f(0.02), Peak: &hoststate.Sample{Load1: 0.3}}
	busy := &hoststate.State{Cores: 2, OtherCores: f(1.7), Peak: &hoststate.Sample{Load1: 9.8}}
	for _, d := range hoststate.Compare(quiet, busy) {
		fmt.Println(d)
	}
	_, why := busy.Busy(hoststate.DefaultBusyShare)
	fmt.Println(why)
	busy.Before = &hoststate.Sample{Load1: 4, Governor: "performance"}
	busy.Peak.GPUs = []hoststate.GPU{{Index: 0, Source: "nvidia-smi", TempC: 83, ClockMHz: 2520, PowerW: 287}}
	fmt.Println(busy)
	// Output:
	// load 0.3 vs 9.8 on 2 cores
	// other processes took 0.0 vs 1.7 cores while the engine ran
	// other processes took 1.7 of 2 cores while the engine ran (load 9.8)
	// 2 cores, load 4.0 before and 9.8 at most, other processes 1.7 cores, GPU 0 83 °C 2520 MHz 287 W
}
