// rigor's native build of node-llama-cpp (engine.build.flavour: "localBuild").
//
// rigor runs this script with node in a build directory of its build cache
// that holds a copy of the locked node-llama-cpp install (without the
// prebuilt platform package). node-llama-cpp clones the llama.cpp source it
// bundles (llama/gitRelease.bundle: no network) and compiles it for this
// machine's CPU (GGML_NATIVE) into llama/localBuilds/<platform>/Release,
// which its getLlama() prefers to prebuilt binaries. The last line of stdout
// is a JSON line rigor reads: what node-llama-cpp loaded.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const llama = await getLlama({
	gpu: false,
	build: "forceRebuild",
	usePrebuiltBinaries: false,
	progressLogs: true,
	logLevel: LlamaLogLevel.warn,
});
const out = {
	buildType: llama.buildType,
	release: llama.llamaCppRelease?.release ?? "",
	repo: llama.llamaCppRelease?.repo ?? "",
	systemInfo: llama.systemInfo,
};
await llama.dispose();
process.stdout.write("\nrigor-native-build " + JSON.stringify(out) + "\n");
