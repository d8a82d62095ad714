"""InferenceX results interop: export measured points in its aggregated and raw bench-client
formats, import its published aggregated results as external runs, and compare with them."""
