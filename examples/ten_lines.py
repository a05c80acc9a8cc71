import seedcam

with seedcam.open() as sensor:  # $SEEDCAM_PORT, else the only sensor plugged in
    print("connected to sensor", sensor.device_info.serial_number)
    for result in sensor.results():
        if (lane := result.lane) is not None:
            print(f"frame {result.frame_id}: {lane.status.value}, offset {lane.offset_m * 100:+.1f} cm, "
                  f"heading {lane.heading_deg:+.1f} deg, curvature {lane.curvature_per_m:+.2f} 1/m")
        for d in result.detections:  # signs and plates, each plate with the text read off it
            print(f"  {d.label} ({d.score:.0%})", *(f'reads "{t.text}"' for t in result.text_lines if t.box == d.box))
