"""The second registry client of the OCI tests: oras (PyPI, pinned in tests/oci/requirements.txt).

    oras_client.py push REGISTRY TARGET FILE [CONFIG_TYPE [LAYER_TYPE]]
                                               push FILE as a wasm component artifact
                                               (application/wasm layer, config of media type
                                               application/vnd.wasm.config.v0+json), or with
                                               the media types given
    oras_client.py pull REGISTRY TARGET OUTDIR pull TARGET's layers into OUTDIR; print their paths

REGISTRY is host:port, spoken to over plain HTTP (the tests' registries are on 127.0.0.1).
"""

import hashlib
import json
import os
import sys
import tempfile

import oras.client


def main() -> None:
    command, registry, target = sys.argv[1:4]
    client = oras.client.OrasClient(hostname=registry, insecure=True)
    if command == "push":
        path = os.path.abspath(sys.argv[4])
        config_type = sys.argv[5] if len(sys.argv) > 5 else "application/vnd.wasm.config.v0+json"
        layer_type = sys.argv[6] if len(sys.argv) > 6 else "application/wasm"
        with open(path, "rb") as file:
            digest = "sha256:" + hashlib.sha256(file.read()).hexdigest()
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.json")
            with open(config, "w") as file:
                json.dump({"architecture": "wasm", "os": "wasip2", "layerDigests": [digest]}, file)
            os.chdir(os.path.dirname(path))
            response = client.push(
                target=target,
                files=[f"{os.path.basename(path)}:{layer_type}"],
                manifest_config=f"{config}:{config_type}",
                disable_path_validation=True,
            )
            response.raise_for_status()
    elif command == "pull":
        for path in client.pull(target=target, outdir=sys.argv[4]):
            print(path)
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
