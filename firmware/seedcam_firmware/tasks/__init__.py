"""Perception tasks run by the firmware pipeline."""
