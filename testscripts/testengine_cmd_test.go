package testscripts

import "github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"

func init() {
	// testengine DIR [--ik] [--patches PDIR]: a llama.cpp-shaped engine
	// source repository built by cmake (internal/engine/llamacpp/testengine); sets
	// TESTENGINE_V1, TESTENGINE_V2, TESTENGINE_BROKEN, TESTENGINE_WRONG_COMMIT.
	scriptCmds["testengine"] = testengine.Cmd
}
