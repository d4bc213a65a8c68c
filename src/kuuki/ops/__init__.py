"""Operating a running bot: its Prometheus metrics (`metrics`) and the operator
server that serves them next to `kuuki run` (`server`)."""
