"""The lane family: training data, the network, training, the bundle and its evaluation."""

#: the version ``train-lane`` gives the bundles it writes (the shipped one's); its major number names the model
LANE_VERSION = "3.2.0"
