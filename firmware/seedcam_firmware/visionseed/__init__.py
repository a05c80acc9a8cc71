"""The VisionSeed compatibility personality: the original VisionSeed host SDKs work unchanged.

Selected with ``link.protocol = "visionseed"`` (or ``seedcam-firmware run
--protocol visionseed``). It is an adapter at the edge of the link: the camera,
the pipeline, the tasks and the device services are the ones the native
protocol uses; only the framing and the messages differ.

* :mod:`~seedcam_firmware.visionseed.link`: the VisionSeed personality of the LinkServer
  (framing and messages);
* :mod:`~seedcam_firmware.visionseed.framing`, :mod:`~seedcam_firmware.visionseed.datav2`: the
  sans-IO frame codec and the ``dataV2`` result-tree codec; ``_proto``: the generated schema copy;
* :mod:`~seedcam_firmware.visionseed.results`: Results as ``dataV2`` trees (the model-id table),
  health as ``systemStatusResult`` heartbeats;
* :mod:`~seedcam_firmware.visionseed.rpc`: VisionSeed RPCs onto the device services;
* :mod:`~seedcam_firmware.visionseed.files`, :mod:`~seedcam_firmware.visionseed.custom_model`,
  :mod:`~seedcam_firmware.visionseed.config_text`: files, uploaded models, config text.

docs/visionseed.md describes it for users.
"""
