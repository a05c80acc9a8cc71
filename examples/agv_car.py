"""Drive a real AGV car: the seedcam sensor on one serial port, the motor controller on another.

    python examples/agv_car.py --sensor /dev/ttyACM0 --motor /dev/ttyUSB0

The controller is the one the simulator (``seedcam agv-sim``) tests: lane
keeping from the sensor's lane state, stop signs and speed limits from its
detections, and a watchdog that stops the car when the sensor goes quiet.
The motor controller speaks the line protocol of
``seedcam.agv.serial_motor`` (``$D,<seq>,<speed_mm_s>,<steer_mrad>*CS``) and
must brake on its own when no command arrives for 250 ms. Ctrl-C stops the car.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

import seedcam
from seedcam.agv import AgvConfig, AgvController, ControlLoop, DriveCommand, SensorClock, SerialMotorController


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sensor", default=os.environ.get("SEEDCAM_PORT"), help="sensor port (default $SEEDCAM_PORT)")
    parser.add_argument("--motor", required=True, help="motor controller port, e.g. /dev/ttyUSB0")
    parser.add_argument("--motor-baud", type=int, default=115200)
    parser.add_argument("--cruise", type=float, default=0.5, help="cruise speed, m/s")
    parser.add_argument("--wheelbase", type=float, default=0.15, help="metres; the sensor sits above the front axle")
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    config = AgvConfig(cruise_speed_mps=args.cruise, wheelbase_m=args.wheelbase)
    with seedcam.open(args.sensor) as sensor, SerialMotorController(args.motor, args.motor_baud) as motor:
        available = {model.task for model in sensor.models()}
        tasks = sensor.select_tasks([t for t in ("lane", "detect") if t in available]).enabled
        print(f"sensor {sensor.device_info.serial_number}: tasks {', '.join(tasks)}")
        clock = SensorClock.calibrate(sensor)  # the sensor's clock is not ours: offset from the link delay
        controller = AgvController(config, clock)
        shown = [""]

        def on_command(now: float, command: DriveCommand) -> None:
            if command.reason != shown[0]:  # print what the car is doing when it changes
                shown[0] = command.reason
                print(f"{command.reason:<12} speed {command.speed_mps:.2f} m/s, steer {command.steering_rad:+.2f} rad")

        loop = ControlLoop(sensor, motor, controller, rate_hz=50, on_command=on_command)
        signal.signal(signal.SIGINT, lambda *_: loop.request_stop())
        signal.signal(signal.SIGTERM, lambda *_: loop.request_stop())
        loop.run(duration_s=args.duration)  # stops the motor on the way out
        print(f"done: {controller.stats}")
        for event in controller.events:
            print(f"sign event: {event.kind} at {event.odometer_m:.2f} m")
    return 0


if __name__ == "__main__":
    sys.exit(main())
