"""The plate OCR family: training data, the network, training, the bundle and its evaluation."""
