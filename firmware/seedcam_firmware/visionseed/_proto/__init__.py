"""Generated protobuf code for the VisionSeed schema copy (private; regenerate with `seedcam-tools proto`)."""
