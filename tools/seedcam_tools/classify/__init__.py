"""The image classifier family: a folder of images, the network, training (to a bundle) and its evaluation."""
