"""The detector family: training data, the network, training, the bundle and its evaluation."""

#: the version ``train-detector`` gives the bundles it writes (the shipped one's); its major number names the model
DETECT_VERSION = "5.3.0"
