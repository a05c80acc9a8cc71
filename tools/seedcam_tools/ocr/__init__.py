"""The plate OCR family: training data, the network, training, the bundle and its evaluation."""

#: the version ``train-ocr`` gives the bundles it writes (the shipped one's); its major number names the model
OCR_VERSION = "4.3.0"
