"""Operating a running bot (issue 27): its Prometheus metrics (`metrics`) and the operator
server that serves them next to `kuuki run` (`server`)."""
