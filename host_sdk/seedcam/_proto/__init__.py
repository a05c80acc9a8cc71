"""Generated protobuf code for the wire schema (private; regenerate with `seedcam-tools proto`)."""
