import _chart
def save(figure, name, source):
    figure.tight_layout(); figure.savefig(f"/tmp/{name}.png")
_chart.save = save
import runpy, sys
runpy.run_path(sys.argv[1])
