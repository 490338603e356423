{
  "targets": [
    {
      "target_name": "npu_block_gate",
      "sources": ["src/npu_block_gate.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-ffp-contract=off", "-fno-math-errno", "-Wall", "-Wno-psabi"],
      "ldflags": ["-pthread"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "OTHER_CPLUSPLUSFLAGS": ["-std=c++17", "-O3", "-ffp-contract=off"]
      },
      "msvs_settings": { "VCCLCompilerTool": { "ExceptionHandling": 1, "AdditionalOptions": ["/fp:precise"] } }
    }
  ]
}
