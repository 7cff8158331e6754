package rig_test

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/rig"
)

func ExampleNormalizeName() {
	fmt.Println(rig.NormalizeName("Intel(R) Arc(TM) Pro B70 Graphics"))
	fmt.Println(rig.NormalizeName("NVIDIA GeForce RTX 4090"))
	// Output:
	// Intel Arc Pro B70
	// NVIDIA GeForce RTX 4090
}

func ExampleParseNvidiaSMI() {
	out := []byte("0, GPU-3b5f2c1a-7d4e-4f6b-9a2c-1e8d7b6a9c1e, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 24564, 570.86.15, 8.9\n")
	gpus, err := rig.ParseNvidiaSMI(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := rig.Rig{Accelerators: gpus, HostProcessorModelName: "AMD Ryzen 9 7950X 16-Core Processor", HostMemoryCapacityGB: 62.4}
	fmt.Println(gpus[0].PCIBusID, gpus[0].Arch)
	fmt.Println(r.Summary())
	// Output:
	// 0000:01:00.0 sm_89
	// 1× NVIDIA GeForce RTX 4090 24 GB, AMD Ryzen 9 7950X, 62 GB
}
